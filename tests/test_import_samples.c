/* Sample readers: the generic table (genes in one column or several, labels,
 * categories, ids, no header) and Costanzo SGA tables, the real SGA subsets
 * against awk; unresolved genes dropped or strict; malformed files named by
 * file, line and reason; pertload's samples TSV (`build --samples`) read by
 * the same reader; the provider's progress. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"
#include "preprocess/import/samples/provider.h"
#include "preprocess/import/samples/samples.h"

static pl_names *nm;
static pl_smp_result res;

static void teardown(void)
{
    pl__smp_result_free(&res);
    pl__names_free(nm);
    nm = NULL;
    pl_test_dir_fini();
}
TestSuite(import_samples, .init = pl_test_dir_init, .fini = teardown);

static void genes(const char *list)
{
    nm = pl_test_names("genes.txt", list);
}

/* Each emitted sample as "id g1,g2 | l1 l2 | c1 c2\n" (labels "%.9g",
 * categories by value). */
static int collect(void *ctx, const pl_smp_row *r, pl_err *err)
{
    (void)err;
    pl_test_text *t = ctx;
    pl_test_tprintf(t, "%llu ", (unsigned long long)r->id);
    for (uint32_t i = 0; i < r->n_genes; i++)
        pl_test_tprintf(t, "%s%s", i ? "," : "", pl__names_gene(nm, (uint32_t)r->genes[i]));
    pl_test_tprintf(t, " |");
    for (uint32_t l = 0; l < res.n_labels; l++)
        pl_test_tprintf(t, " %.9g", (double)r->labels[l]);
    pl_test_tprintf(t, " |");
    for (uint32_t c = 0; c < res.n_categories; c++)
        pl_test_tprintf(t, " %s", res.cat_values[c].names[r->cats[c]]);
    pl_test_tprintf(t, "\n");
    return 0;
}

/* One read of a sample table: its spec, the mode, where its rows go (NULL:
 * nowhere). */
typedef struct smp_read {
    const pl_smp_spec *spec;
    int strict;
    pl_test_text *out;
} smp_read;

static int read_table(void *ctx, const char *p, pl_err *err)
{
    const smp_read *r = ctx;
    pl_smp_spec s = *r->spec;
    s.file = p;
    pl__smp_result_free(&res);
    return pl__smp_read(&s, nm, r->strict, r->out ? collect : NULL, r->out, &res, err);
}

static int read_as(const pl_smp_spec *s0, const char *text, int codec, int strict,
                   pl_test_text *out, pl_err *err)
{
    smp_read r = {s0, strict, out};
    return read_table(&r, pl_test_put("s.tsv", text, codec), err);
}

static void expect_bad(const pl_smp_spec *s, const char *text, unsigned long line,
                       unsigned long col, const char *reason)
{
    smp_read r = {s, 0, NULL};
    pl_test_read_fails(read_table, &r, "s.tsv", text, PL_TEST_PLAIN, line, col, reason);
}

/* -------------------------------------------------------------- table */

Test(import_samples, table_genes_labels_categories)
{
    genes("YAL001C\nYAL002W\nACT1\nYBR001C\n");
    const char *text = "# screen\n"
                       "id\tgenes\tfitness\tsplit\tscore\n"
                       "7\tYAL001C;yal002w\t0.5\ttrain\t1\n"
                       "8\t act1 \tNA\tval\t\n"
                       "9\tYAL001C;NOPE\t0.1\ttrain\t2\n"
                       "10\tYBR001C;YAL001C;YBR001C\t-1e-3\ttest\t3\n"
                       "11\tYAL002W\t2\ttrain\tnan\n";
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.id = "id";
    s.comment = "#";
    s.categories[s.n_categories++] = "split";
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_err err;
        cr_assert_eq(read_as(&s, text, c, 0, &out, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "7 YAL001C,YAL002W | 0.5 1 | train\n"
                                "8 ACT1 | nan nan | val\n"
                                "10 YBR001C,YAL001C | -0.00100000005 3 | test\n"
                                "11 YAL002W | 2 nan | train\n");
        cr_assert_eq(res.rows, 5);
        cr_assert_eq(res.kept, 4);
        cr_assert_eq(res.dropped, 1);
        cr_assert_eq(res.dropped_rows[0], 2);
        cr_assert_eq(res.n_labels, 2);
        cr_assert_str_eq(res.label_names[0], "fitness");
        cr_assert_str_eq(res.label_names[1], "score");
        cr_assert_eq(res.n_categories, 1);
        cr_assert_str_eq(res.cat_names[0], "split");
        cr_assert_eq(res.cat_values[0].n, 3); /* train val test, codes 0 1 2 */
        cr_assert_str_eq(res.cat_values[0].names[2], "test");
        uint64_t count, line;
        cr_assert_eq(pl__unres_distinct(&res.names), 1);
        cr_assert_str_eq(pl__unres_name(&res.names, 0, &count, &line), "NOPE");
        cr_assert_eq(line, 5);
        free(out.s);
    }
}

Test(import_samples, table_gene_columns_no_header)
{
    genes("A\nB\nC\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.header = 0;
    s.sep = ',';
    s.gene_columns[s.n_gene_columns++] = "1";
    s.gene_columns[s.n_gene_columns++] = "2";
    s.labels[s.n_labels++] = "4";
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_as(&s, "A,B,x,0.25\nC,,y,1\n", PL_TEST_GZIP, 1, &out, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(out.s, "0 A,B | 0.25 |\n1 C | 1 |\n");
    cr_assert_str_eq(res.label_names[0], "column4");
    free(out.s);
}

Test(import_samples, table_strict_mode)
{
    genes("A\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    pl_err err;
    cr_assert_eq(read_as(&s, "genes\tx\nA\t1\nA;Q\t2\n", PL_TEST_PLAIN, 1, NULL, &err),
                 PL_EPARSE);
    pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, path, 3, 3,
                      "unresolved gene name 'Q' (strict mode)");
}

Test(import_samples, table_malformed)
{
    genes("A\nB\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    expect_bad(&s, "gene\tx\nA\t1\n", 1, 0, "the header has no 'genes' column");
    expect_bad(&s, "genes\tx\nA\t1\nB\n", 3, 2, "expected 2 columns as in the header, found 1");
    expect_bad(&s, "genes\tx\nA\t1\nB\ttrain\n", 3, 3,
               "bad number 'train' in label column 'x' (a text column is kept with "
               "'categories')");
    expect_bad(&s, "genes\tx\nA\t1\n\t2\n", 3, 1, "sample has no genes");
    expect_bad(&s, "genes\tx\nA;;B\t1\n", 2, 3, "empty gene name");
    expect_bad(&s, "genes\tx\tx\nA\t1\t2\n", 1, 9, "duplicate column 'x' in the header");
    expect_bad(&s, "genes\tx\nA\t1e39\n", 2, 3, "out of the float32 range");
    s.id = "id";
    expect_bad(&s, "id\tgenes\n-1\tA\n", 2, 1, "bad id '-1'");
    pl_smp_spec t;
    pl__smp_spec_init(&t);
    t.header = 0;
    t.genes = "name";
    pl_err err;
    cr_assert_eq(read_as(&t, "A\n", PL_TEST_PLAIN, 0, NULL, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "column 'name' is a name, but the file has no header"), "%s",
              err.msg);
}

/* A category's value: a level needs a name, and no tab or line break (the
 * category store's own separators) in a table of another separator. */
Test(import_samples, table_category_values_malformed)
{
    genes("A\nB\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.sep = ',';
    s.categories[s.n_categories++] = "split";
    expect_bad(&s, "genes,split\nA,train\nB,\n", 3, 3,
               "empty value in category column 'split' (a level needs a name)");
    expect_bad(&s, "genes,split\nA,tr\tain\n", 2, 5,
               "a tab or a line break in category column 'split'");
}

/* A column under both `labels` and `categories`: a category, and a label
 * holding its code; a category value must be a non-empty level name. */
Test(import_samples, table_label_and_category_column)
{
    genes("A\nB\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.labels[s.n_labels++] = "x";
    s.labels[s.n_labels++] = "split";
    s.categories[s.n_categories++] = "split";
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_as(&s, "genes\tx\tsplit\nA\t1\tval\nB\t2\ttrain\nA\t3\tval\n",
                         PL_TEST_PLAIN, 1, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "0 A | 1 0 | val\n1 B | 2 1 | train\n2 A | 3 0 | val\n");
    cr_assert_eq(res.n_labels, 2);
    cr_assert_str_eq(res.label_names[1], "split");
    cr_assert_str_eq(res.cat_names[0], "split");
    free(out.s);
    expect_bad(&s, "genes\tx\tsplit\nA\t1\tval\nB\t2\t\n", 3, 5,
               "empty value in category column 'split' (a level needs a name)");
    pl_smp_spec t = s;
    t.n_categories = 0;
    t.categories[t.n_categories++] = "x";
    t.categories[t.n_categories++] = "x";
    cr_assert_eq(read_as(&t, "genes\tx\nA\t1\n", PL_TEST_PLAIN, 0, NULL, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "column 'x' is given two roles"), "%s", err.msg);
}

/* ---------------------------------------------------------------- SGA */

#define SGA_HEADER "Query Strain ID\tQuery allele name\tArray Strain ID\tArray allele name\t" \
    "Arraytype/Temp\tGenetic interaction score (\xce\xb5)\tP-value\tQuery single mutant "   \
    "fitness (SMF)\tArray SMF\tDouble mutant fitness\tDouble mutant fitness standard "      \
    "deviation\n"

Test(import_samples, sga_real_subsets_match_awk)
{
    char *root = pl_test_real_data();
    char gl[4096];
    snprintf(gl, sizeof gl, "%s/real/dango-string/yeast_string_genes.txt.gz", root);
    nm = pl_test_names_from(gl, 0);
    const char *files[] = {"SGA_ExE", "SGA_ExN_NxE", "SGA_NxN"};
    unsigned long total_dropped = 0;
    for (int i = 0; i < 3; i++) {
        char p[4096], cmd[12000];
        snprintf(p, sizeof p, "%s/real-raw/sga_costanzo2016/%s.txt.gz", root, files[i]);
        pl_smp_spec s;
        pl__smp_spec_init(&s);
        s.format = PL_SMP_SGA;
        s.file = p;
        pl_test_text out = {0};
        pl_err err;
        pl__smp_result_free(&res);
        cr_assert_eq(pl__smp_read(&s, nm, 0, collect, &out, &res, &err), 0, "%s", err.msg);
        char *ours = pl_test_put_text(dir, "ours.txt", &out);
        /* awk: strip the strain tags, drop rows whose genes are not listed,
         * print the row number, genes, the six labels (nan where empty) and
         * Arraytype/Temp; compare numbers to float precision (below float's
         * smallest normal number, 1e-38, absolutely: a p-value of 2.672e-42) */
        snprintf(cmd, sizeof cmd,
                 "zcat '%s' > '%s/g.txt'; "
                 "zcat '%s' | awk -F'\\t' 'NR==FNR {g[$1]=1; next} FNR>1 {row=FNR-2; "
                 "q=$1; sub(/_[^_]*$/, \"\", q); a=$3; sub(/_[^_]*$/, \"\", a); "
                 "if (!(q in g) || !(a in g)) next; "
                 "printf \"%%d %%s\", row, q; if (a != q) printf \",%%s\", a; printf \" |\"; "
                 "for (k = 6; k <= 11; k++) printf \" %%s\", ($k == \"\" ? \"nan\" : $k); "
                 "printf \" | %%s\\n\", $5}' '%s/g.txt' - > '%s/want.txt'; "
                 "paste -d'\\t' '%s' '%s/want.txt' | awk -F'\\t' '{split($1, o, \" \"); "
                 "split($2, w, \" \"); if (length(o) != 11 || length(w) != 11) bad++; "
                 "for (k = 1; k <= 11; k++) { if (k >= 4 && k <= 9) { if (o[k] == \"nan\" || "
                 "w[k] == \"nan\") { if (o[k] != w[k]) bad++ } else { d = o[k] - w[k]; "
                 "if (d * d > 1e-12 * w[k] * w[k] + 1e-76) bad++ } } else if (o[k] != w[k]) bad++ } } "
                 "END {print (bad ? -1 : NR)}'",
                 gl, dir, p, dir, dir, ours, dir);
        FILE *f = popen(cmd, "r");
        long n = -2;
        cr_assert_eq(fscanf(f, "%ld", &n), 1, "%s", cmd);
        cr_assert_eq(pclose(f), 0);
        cr_assert_eq((uint64_t)n, res.kept, "%s: %ld rows agree, %llu kept", files[i], n,
                     (unsigned long long)res.kept);
        cr_assert_eq(res.rows, 50);
        cr_assert_eq(res.kept + res.dropped, 50);
        total_dropped += res.dropped;
        cr_assert_eq(res.n_labels, 6);
        cr_assert_str_eq(res.label_names[0], "epsilon");
        cr_assert_str_eq(res.cat_names[0], "arraytype_temp");
        free(ours), free(out.s);
    }
    cr_assert_eq(total_dropped, 3); /* three NxN genes are not in the STRING gene list */
    free(root);
}

Test(import_samples, sga_strain_tags_and_same_gene)
{
    genes("YAL002W\nYBR001C\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.format = PL_SMP_SGA;
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_as(&s, SGA_HEADER
                         "YAL002W_dma1\tvps8\tYBR001C_tsa12\tnth2-1\tDMA30\t-0.1\t1e-3\t0.9\t"
                         "0.8\t0.62\t0.01\n"
                         "YAL002W_sn5\tvps8\tYAL002W_dma1\tvps8\tTSA26\t0\t0.5\t\t1\t1\t0\n",
                         PL_TEST_ZSTD, 1, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "0 YAL002W,YBR001C | -0.100000001 0.00100000005 0.899999976 "
                            "0.800000012 0.620000005 0.00999999978 | DMA30\n"
                            "1 YAL002W | 0 0.5 nan 1 1 0 | TSA26\n");
    free(out.s);
}

Test(import_samples, sga_malformed)
{
    genes("YAL002W\nYBR001C\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.format = PL_SMP_SGA;
    expect_bad(&s, "genes\tx\nA\t1\n", 1, 0,
               "not a Costanzo SGA table: the header has no 'Query Strain ID' column");
    expect_bad(&s, "", 1, 0, "empty file, not a Costanzo SGA table");
    expect_bad(&s, SGA_HEADER "YAL002W_dma1\tv\tYBR001C_tsa1\tn\tDMA30\t-0.1\n", 2, 41,
               "expected 11 columns as in the header, found 6");
    expect_bad(&s, SGA_HEADER "YAL002W_dma1\tv\tYBR001C_tsa1\tn\tDMA30\tx\t1\t1\t1\t1\t1\n", 2,
               37, "bad number 'x' in label column 'epsilon'");
    expect_bad(&s, SGA_HEADER "_dma1\tv\tYBR001C_tsa1\tn\tDMA30\t1\t1\t1\t1\t1\t1\n", 2, 1,
               "query strain id '_dma1' has no gene before its '_'");
    expect_bad(&s, SGA_HEADER "YAL002W_dma1\tv\t\tn\tDMA30\t1\t1\t1\t1\t1\t1\n", 2, 16,
               "empty array strain id");
    pl_err err;
    cr_assert_eq(read_as(&s, SGA_HEADER "YAL002W_dma1\tv\tYQQ_tsa1\tn\tDMA30\t1\t1\t1\t1\t1\t1\n",
                         PL_TEST_PLAIN, 1, NULL, &err), PL_EPARSE);
    pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, path, 2, 16,
                      "unresolved gene name 'YQQ' (strict mode)");
}

/* Row by row, as a build takes them: dropped rows marked; a second file
 * appends (rows and ids count on, category codes shared). */
Test(import_samples, rows_pulled_and_files_appended)
{
    genes("A\nB\n");
    char *p1 = pl_test_write(dir, "one.tsv", "genes\tsplit\tx\nA\ttrain\t1\nQ\tval\t2\n");
    const char *t2 = "genes\tsplit\tx\nB\tval\t3\nA;B\ttest\t4\n";
    char *p2 = pl_test_write_codec(dir, "two.tsv.gz", t2, strlen(t2), PL_TEST_GZIP);
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    s.categories[s.n_categories++] = "split";
    pl_err err;
    const char *want[] = {"0 0 0 A 1", "1 1 1 - -", "2 0 1 B 3", "3 0 2 A,B 4"};
    int k = 0;
    for (int f = 0; f < 2; f++) {
        s.file = f ? p2 : p1;
        pl_smp_rd *d;
        cr_assert_eq(pl__smp_open(&s, nm, 0, &res, &d, &err), 0, "%s", err.msg);
        cr_assert_eq(res.n_labels, 1);
        const pl_smp_row *r;
        int rc;
        while ((rc = pl__smp_next(d, &r, &err)) == 1) {
            char got[128];
            int n = snprintf(got, sizeof got, "%llu %d %u ", (unsigned long long)r->id,
                             r->dropped, r->cats[0]);
            if (r->dropped)
                snprintf(got + n, sizeof got - n, "- -");
            else
                snprintf(got + n, sizeof got - n, "%s%s%s %g", pl__names_gene(nm, (uint32_t)r->genes[0]),
                         r->n_genes > 1 ? "," : "", r->n_genes > 1 ? pl__names_gene(nm, (uint32_t)r->genes[1]) : "",
                         (double)r->labels[0]);
            cr_assert(k < 4);
            cr_assert_str_eq(got, want[k++]);
        }
        cr_assert_eq(rc, 0, "%s", err.msg);
        pl__smp_close(d);
    }
    cr_assert_eq(k, 4);
    cr_assert_eq(res.rows, 4);
    cr_assert_eq(res.kept, 3);
    cr_assert_eq(res.dropped, 1);
    cr_assert_eq(res.cat_values[0].n, 3);
    free(p1), free(p2);
}

/* ------------------------------------------------------- samples TSV */

/* pertload's samples TSV (`build --samples`), as the table reader reads it
 * with spec `tsv`: the fixed settings of the build. */
static void tsv_spec(pl_smp_spec *s)
{
    pl__smp_spec_init(s);
    s->tsv = 1;
    s->id = "id";
    s->id_optional = 1;
    s->min_resolved = 0;
}

/* The build's text rules: a byte order mark, CRLF, blank and indented '#'
 * lines, a line without a tab split at runs of spaces, fields trimmed, a
 * gene named twice kept twice, an empty label missing; a header field that
 * is a number is a label name. */
Test(import_samples, samples_tsv_by_the_build_text_rules)
{
    genes("A\nB\nC\n");
    pl_smp_spec s;
    tsv_spec(&s);
    const char *text = "\xEF\xBB\xBFid\tgenes\tfitness\t2024\r\n"
                       "  \t \r\n"
                       "  # a comment\r\n"
                       "7\tA; A ;B\t0.5\t1\r\n"
                       "8   B  1.5 2\r\n"
                       "9\t C \t\t3\r\n";
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_err err;
        cr_assert_eq(read_as(&s, text, c, 1, &out, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "7 A,A,B | 0.5 1 |\n8 B | 1.5 2 |\n9 C | nan 3 |\n");
        cr_assert_eq(res.n_labels, 2);
        cr_assert_str_eq(res.label_names[1], "2024");
        free(out.s);
    }
    /* a recipe table reads the same bytes otherwise: the mark is part of a
     * name, the blank line a row of one field */
    pl_smp_spec t;
    pl__smp_spec_init(&t);
    pl_err err;
    cr_assert_eq(read_as(&t, text, PL_TEST_PLAIN, 1, NULL, &err), PL_EPARSE);
}

/* The samples TSV's messages: those `build --samples` always gave. */
Test(import_samples, samples_tsv_messages)
{
    genes("A\nB\n");
    pl_smp_spec s;
    tsv_spec(&s);
    expect_bad(&s, "id\tfitness\n1\t2\n", 1, 1, "the header has no 'genes' column");
    expect_bad(&s, "# nothing\n\n", 1, 1, "no header row (expected a 'genes' column)");
    expect_bad(&s, "genes\tx\nA\t1\nB\ttrain\n", 3, 3, "bad number 'train' in column 'x'");
    expect_bad(&s, "genes\tx\nA;;B\t1\n", 2, 3, "empty gene name in 'A;;B'");
    expect_bad(&s, "genes\tx\nA\t1\rB\t2\n", 2, 4,
               "carriage return without line feed (CR-only line endings?)");
    expect_bad(&s, "genes\tx\xE2\x80\x8B\nA\t1\n", 1, 8,
               "column name contains U+200B, an invisible format character");
    expect_bad(&s, "genes\t\tx\tx\nA\t1\t2\t3\n", 1, 7, "empty column name in the header");
    expect_bad(&s, "genes\tx\nA\t-1e39\n", 2, 3, "label '-1e39' in column 'x' is out of the "
               "float32 range (magnitude above 3.4028235e+38)");
    pl_err err;
    cr_assert_eq(read_as(&s, "genes\tx\nA;Q\t1\n", PL_TEST_PLAIN, 1, NULL, &err), PL_EPARSE);
    pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, path, 2, 3, "unknown gene 'Q'");
    /* not strict: the row is dropped, its name noted */
    cr_assert_eq(read_as(&s, "genes\tx\nA;Q\t1\nB\t2\n", PL_TEST_PLAIN, 0, NULL, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(res.rows, 2);
    cr_assert_eq(res.dropped, 1);
}

/* What a recipe table now says as the samples TSV does: an empty gene name
 * with its field, the float32 bound, and a row wider than 256 columns as a
 * count against the header (it said "more than 256 columns"). */
Test(import_samples, table_messages_shared_with_the_samples_tsv)
{
    genes("A\nB\n");
    pl_smp_spec s;
    pl__smp_spec_init(&s);
    expect_bad(&s, "genes\tx\nA;;B\t1\n", 2, 3, "empty gene name in 'A;;B'");
    expect_bad(&s, "genes\tx\nA\t1e39\n", 2, 3, "label '1e39' in column 'x' is out of the "
               "float32 range (magnitude above 3.4028235e+38)");
    pl_test_text t = {0};
    pl_test_tprintf(&t, "genes\tx\nA\t1\nB");
    for (int i = 1; i < 257; i++)
        pl_test_tprintf(&t, "\t1");
    pl_test_tprintf(&t, "\n");
    expect_bad(&s, t.s, 3, 5, "expected 2 columns as in the header, found 257");
    free(t.s);
}

/* The provider reports how much of its tables it has read (the build's
 * progress): from the first table to the end of the last. */
Test(import_samples, provider_reports_progress)
{
    genes("A\nB\n");
    char *p1 = pl_test_write(dir, "one.tsv", "genes\tx\nA\t1\nB\t2\n");
    char *p2 = pl_test_write(dir, "two.tsv", "genes\tx\nB\t3\n");
    pl_smp_spec s[2];
    pl__smp_spec_init(&s[0]);
    s[0].file = p1;
    s[1] = s[0];
    s[1].file = p2;
    pl_smp_provider p;
    pl__build_samples bs;
    pl_err err;
    cr_assert_eq(pl__smp_provider_open(&p, s, 2, nm, 1, &bs, &err), 0, "%s", err.msg);
    cr_assert(bs.frac != NULL, "no progress");
    double last = bs.frac(bs.ctx);
    cr_assert(last >= 0 && last <= 0.5, "%g before the first row", last);
    pl__sample_row r;
    int rc, rows = 0;
    while ((rc = bs.next(bs.ctx, &r, &err)) == 1) {
        double f = bs.frac(bs.ctx);
        cr_assert(f >= last && f <= 1, "%g after %g", f, last);
        last = f;
        rows++;
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(rows, 3);
    cr_assert_float_eq(bs.frac(bs.ctx), 1.0, 1e-12);
    pl__smp_provider_close(&p);
    free(p1), free(p2);
}
