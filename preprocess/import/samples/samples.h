/* Sample tables as downloaded: one sample per row, its deleted genes, float
 * labels and text categories, handed out row by row (the file streams).
 *
 * Formats:
 *   table  a generic delimited table: `sep` (default tab), `header` (default
 *          true), `comment` prefix of lines to skip. The deleted genes are in
 *          the `genes` column (default "genes"), split at `gene_sep`
 *          (default ';', blanks around a name trimmed), or in several columns
 *          `gene_columns` (one gene or nothing each). `id`: an optional
 *          column of unsigned 64-bit sample ids (default: the row number,
 *          0-based). `categories`: text columns kept as categories (a split
 *          column with train/val/test): each distinct value gets a code in
 *          order of first appearance, stored per sample as a uint32. `labels`:
 *          the float label columns (default: every other column); empty, NA,
 *          NaN and nan are missing (NaN). Columns by name (with a header) or
 *          by 1-based number. `tsv`: pertload's samples TSV, as `build
 *          --samples FILE` reads it (see pl_smp_spec.tsv).
 *   sga    Costanzo et al. 2016 SGA tables (TheCellMap SGA_ExE.txt,
 *          SGA_NxN.txt, SGA_ExN_NxE.txt): tab-separated, the published header.
 *          Genes: the `Query Strain ID` and `Array Strain ID` with the strain
 *          tag after the last '_' removed (YAL002W_dma1 -> YAL002W), the
 *          deleted set {query gene, array gene}. Labels: epsilon (Genetic
 *          interaction score (ε)), pvalue, query_smf, array_smf, dmf,
 *          dmf_std; category: arraytype_temp (Arraytype/Temp).
 *
 * Both formats take constant categories (`set`): a category column that holds
 * the same value on every row of the file, after the file's own categories.
 *
 * Categories, what a database needs to keep them: per sample one uint32 code
 * per category column (pl_smp_row.cats), and per column its names table,
 * code -> value text (pl_smp_result.cat_values, complete once every file is
 * read). A database keeps them in its category store, apart from the
 * labels. A column listed under both `labels` and `categories` is both: a
 * category, and a label holding its codes as floats (exact below 2^24).
 * Category values are non-empty and hold no tab or line break.
 *
 * Gene names resolve through names.h. A row naming a gene that does not
 * resolve is dropped, counted, and its names noted; in strict mode it is an
 * error "file:line:col: unresolved gene name 'X'". Malformed rows are errors
 * "file:line:col: reason".
 */
#ifndef PL_IMPORT_SAMPLES_H
#define PL_IMPORT_SAMPLES_H

#include <stdint.h>

#include "preprocess/import/names/names.h"
#include "preprocess/import/edges/reader.h"
#include "src/core/strtab.h"

typedef enum pl_smp_format {
    PL_SMP_TABLE = 0,
    PL_SMP_SGA = 1,
} pl_smp_format;

/** How a sample file is read. Strings are borrowed. */
typedef struct pl_smp_spec {
    pl_smp_format format;
    const char *file;
    char sep;                 /**< table: 0 = tab; ' ' = runs of blanks */
    int header;               /**< table: the first line names the columns */
    const char *comment;      /**< table: prefix of lines to skip, or NULL */
    const char *genes;        /**< table: the genes column (NULL: "genes") */
    char gene_sep;            /**< table: 0 = ';' */
    const char *gene_columns[PL_IMP_MAX_LIST]; /**< table: one gene each */
    uint32_t n_gene_columns;
    const char *id;           /**< table: id column or NULL */
    int id_optional;          /**< table: a header without `id` means row numbers */
    const char *labels[PL_IMP_MAX_LIST];       /**< table: NULL list = all others */
    uint32_t n_labels;
    const char *categories[PL_IMP_MAX_LIST];
    uint32_t n_categories;
    /** both formats: constant categories, after the file's own: column
     *  set_names[i] holds set_values[i] on every row of this file (files
     *  split by file: `set: {split: train}`) */
    const char *set_names[PL_IMP_MAX_LIST], *set_values[PL_IMP_MAX_LIST];
    uint32_t n_set;
    /** both formats, as an edge source's: a file that keeps no sample
     *  (unless min_resolved is 0), or whose rows resolve on a share under
     *  min_resolved (default 0.5), is an error naming the file and its most
     *  frequent unresolved names; allow_empty accepts anything */
    double min_resolved;
    int allow_empty;
    /** table: pertload's samples TSV (`build --samples FILE`, a recipe's
     *  `samples: {format: tsv}`): lines by the build's text rules
     *  (preprocess/text.h: a byte order mark skipped, a lone CR refused,
     *  blank and '#' lines skipped, a line split at its tabs or else at runs
     *  of spaces, fields trimmed; `sep` and `comment` do not apply), header
     *  names checked for invisible characters and not for data, a gene
     *  named twice in a row kept twice, and the build's messages ("unknown
     *  gene 'X'", "bad number 'x' in column 'c'", a missing column at
     *  line 1 column 1) */
    int tsv;
} pl_smp_spec;

/** Fill `s` with the defaults (table, header, tab, min_resolved 0.5). */
void pl__smp_spec_init(pl_smp_spec *s);

/** One kept sample, valid during the `emit` call only. */
typedef struct pl_smp_row {
    uint64_t row;          /**< 0-based data row, counted over the files read */
    uint64_t id;
    const int32_t *genes;  /**< distinct, in the order written */
    uint32_t n_genes;
    const float *labels;   /**< [n_labels] */
    const uint32_t *cats;  /**< [n_categories] codes */
    int dropped;           /**< 1: it named an unresolved gene (pl__smp_next() only) */
} pl_smp_row;

/** Called per kept sample; a negative return stops the read with it. */
typedef int (*pl_smp_emit)(void *ctx, const pl_smp_row *r, pl_err *err);

/** What a read found. Zero-initialise; pl__smp_result_free(). */
typedef struct pl_smp_result {
    uint32_t n_labels, n_categories;
    char **label_names;    /**< [n_labels] */
    char **cat_names;      /**< [n_categories] */
    pl_strtab *cat_values; /**< [n_categories] code -> value text */
    uint64_t rows;         /**< data rows read */
    uint64_t kept;         /**< samples handed to emit */
    uint64_t dropped;      /**< rows dropped for an unresolved gene */
    uint64_t *dropped_rows;/**< [dropped] their 0-based data rows */
    uint64_t cap_dropped;
    pl_unres names;        /**< the unresolved names */
    uint64_t bytes;        /**< decompressed bytes read */
} pl_smp_result;

/** Check the options that need no file (columns named without a header, a
 *  column given two roles). @return 0 or PL_EUSAGE with the bare reason. */
int pl__smp_check(const pl_smp_spec *s, pl_err *err);

/** Read spec->file; `emit` may be NULL (count only). `r` is zero-initialised
 *  before the first file; reading more files into the same `r` appends
 *  (rows, and default ids, count on; category codes are shared; the labels
 *  and categories must be the first file's). `r` keeps what was read even on
 *  failure. @return 0 or a negative code. */
int pl__smp_read(const pl_smp_spec *s, const pl_names *nm, int strict, pl_smp_emit emit,
                 void *ctx, pl_smp_result *r, pl_err *err);

void pl__smp_result_free(pl_smp_result *r);

/** The resolution rule of `s` (min_resolved, allow_empty) over one table
 *  read: `rows` data rows, `kept` samples kept, `unres` the unresolved names
 *  (their ten most frequent are named). @return 0, or PL_EPARSE naming
 *  s->file: it keeps no sample, or too small a share of its rows. */
int pl__smp_check_resolved(const pl_smp_spec *s, uint64_t rows, uint64_t kept,
                           const pl_unres *unres, pl_err *err);

/** A sample table being read row by row (the builder's row provider). */
typedef struct pl_smp_rd pl_smp_rd;

/** Open spec->file and read its header: the label and category names are in
 *  `r` (appending as pl__smp_read() does) when this returns 0. `r` must
 *  outlive the reader. */
int pl__smp_open(const pl_smp_spec *s, const pl_names *nm, int strict, pl_smp_result *r,
                 pl_smp_rd **out, pl_err *err);

/** The next row, kept or marked dropped (valid until the next call).
 *  @return 1 with a row, 0 at the end, or a negative code. */
int pl__smp_next(pl_smp_rd *d, const pl_smp_row **row, pl_err *err);

/** Share of the table's file read so far, 0 to 1 (progress; 0 for a
 *  pipe). */
double pl__smp_frac(const pl_smp_rd *d);

/** Release; accepts NULL. */
void pl__smp_close(pl_smp_rd *d);

#endif
