/* Sample tables as the builder's row provider (build_input.h): one or more
 * tables read one after another (recipe `tables`, or `build --samples FILE
 * --categories COLS`), their float labels as labels and their category
 * columns as category codes, with the level names after the last row. */
#ifndef PL_IMPORT_SAMPLES_PROVIDER_H
#define PL_IMPORT_SAMPLES_PROVIDER_H

#include "preprocess/build_input.h"
#include "samples.h"

typedef struct pl_smp_provider {
    const pl_smp_spec *specs;
    uint32_t n_specs;
    const pl_names *nm;
    int strict;
    pl_smp_result res;
    pl_smp_rd *rd;
    uint32_t next;       /* the table to open next */
    uint64_t rows0, kept0; /* res.rows and res.kept when the open table began */
    pl__build_samples *bs;
    char *levels;
    uint64_t levels_len, levels_cap;
} pl_smp_provider;

/** Open the first of the `n` (>= 1) tables `specs` (borrowed, like `nm`,
 *  until pl__smp_provider_close()) and fill `*bs` to read them all; rows
 *  naming an unresolved gene are marked dropped unless `strict` makes them
 *  an error. At the end of each table, its resolution is checked as its
 *  spec says (min_resolved, allow_empty: samples.h). @return 0 or a
 *  negative code (err names file:line, or the file). */
int pl__smp_provider_open(pl_smp_provider *p, const pl_smp_spec *specs, uint32_t n,
                          const pl_names *nm, int strict, pl__build_samples *bs, pl_err *err);

/** Release; safe on a zeroed provider. */
void pl__smp_provider_close(pl_smp_provider *p);

#endif
