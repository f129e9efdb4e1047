/* What the sample readers (smp_table.c, smp_sga.c) share: one row's genes,
 * labels and categories, and the result's names (samples.c), and the
 * readers' entry points that smp_read.c calls. */
#ifndef PL_IMPORT_SMP_H
#define PL_IMPORT_SMP_H

#include "samples.h"
#include "preprocess/import/source/source.h"
#include "preprocess/text.h"

struct pl_smp_rd {
    const pl_smp_spec *s;
    const pl_names *nm;
    int strict;
    pl_smp_result *r;
    pl_err *err;
    pl_src *src;
    pl__text tx;          /* spec->tsv: the build's text reader (its source is src) */
    int32_t *genes;       /* the row's genes */
    uint64_t cap_genes;
    uint32_t ng, unknown; /* genes kept, names unresolved */
    float *labels;        /* [n_labels] */
    uint32_t *cats;       /* [n_categories] */
    char **lnames, **cnames; /* this file's label and category names */
    uint32_t nl, nc;
    int names_moved;      /* the names went to the result (the first file) */
    int first_row;        /* a headerless table's first row is being read */
    pl_smp_row out;       /* the row handed out */
    void *state;          /* the format's own (freed by pl__smp_close()) */
};

/** A column given as "3" -> 2 (0-based); as a name -> -2; absent (NULL) ->
 *  -1; a number out of 1..256 -> -3. */
int pl__smp_col_number(const char *c);

/** Allocate the row buffers and name slots for `n_labels` labels and
 *  `n_cats` categories (the reader fills the names with pl__smp_name(), then
 *  calls pl__smp_names_done()). */
int pl__smp_setup(pl_smp_rd *d, uint32_t n_labels, uint32_t n_cats);

/** Copy `s[0..len)` into `*slot` (d->lnames[i] or d->cnames[i]). */
int pl__smp_name(pl_smp_rd *d, char **slot, const char *s, size_t len);

/** After the names are filled: the first file's become the result's; a
 *  later file's must equal them ("file:line: the labels and categories
 *  differ ..."). */
int pl__smp_names_done(pl_smp_rd *d);

/** Name of label `l`, of category `c`. */
const char *pl__smp_label_name(const pl_smp_rd *d, uint32_t l);
const char *pl__smp_cat_name(const pl_smp_rd *d, uint32_t c);

/** Start a row. */
void pl__smp_row_begin(pl_smp_rd *d);

/** Add the gene named by field `f` (resolved; a repeat is ignored, but kept
 *  in the samples TSV (spec tsv); an unresolved name is noted, or in strict
 *  mode an error). An empty field is an error "empty gene name". */
int pl__smp_gene(pl_smp_rd *d, const pl__field *f);

/** Label `l` from field `f` (empty, NA, NaN, nan: missing). */
int pl__smp_label(pl_smp_rd *d, const pl__field *f, uint32_t l);

/** Category `c` from field `f`: the value's code. */
int pl__smp_cat(pl_smp_rd *d, const pl__field *f, uint32_t c);

/** End the row into d->out: a row without genes is an error naming column
 *  `col`; a row with an unresolved gene is marked dropped and counted. */
int pl__smp_row_end(pl_smp_rd *d, uint64_t id, uint32_t col);

/** The formats: `open` reads the header (names, pl__smp_names_done());
 *  `next` reads up to the next row and ends it with pl__smp_row_end():
 *  1, 0 at the end of the file, or a negative code. */
int pl__smp_table_open(pl_smp_rd *d);
int pl__smp_table_next(pl_smp_rd *d);
int pl__smp_sga_open(pl_smp_rd *d);
int pl__smp_sga_next(pl_smp_rd *d);

#endif
