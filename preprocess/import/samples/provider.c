/* Sample tables as the builder's row provider (provider.h). */
#include "provider.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/vec.h"

/* Append `len` bytes of `s` to the levels text. */
static int put(pl_smp_provider *p, const char *s, size_t len, pl_err *err)
{
    if (pl__grow(&p->levels, &p->levels_cap, p->levels_len + len + 1, 1) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    memcpy(p->levels + p->levels_len, s, len);
    p->levels_len += len;
    p->levels[p->levels_len] = '\0';
    return 0;
}

/* "column<TAB>level 0<TAB>level 1...\n" per category column (build_input.h;
 * the reader keeps tabs, line breaks and empty values out of the levels). */
static int levels_text(pl_smp_provider *p, pl_err *err)
{
    PL_TRY(put(p, "", 0, err));
    for (uint32_t c = 0; c < p->res.n_categories; c++) {
        const pl_strtab *v = &p->res.cat_values[c];
        PL_TRY(put(p, p->res.cat_names[c], strlen(p->res.cat_names[c]), err));
        for (uint32_t k = 0; k < v->n; k++) {
            PL_TRY(put(p, "\t", 1, err));
            PL_TRY(put(p, v->names[k], strlen(v->names[k]), err));
        }
        PL_TRY(put(p, "\n", 1, err));
    }
    p->bs->levels = p->levels;
    return 0;
}

static int provider_next(void *ctx, pl__sample_row *row, pl_err *err)
{
    pl_smp_provider *p = ctx;
    for (;;) {
        if (!p->rd) {
            if (p->next == p->n_specs)
                return p->res.n_categories ? levels_text(p, err) : 0;
            p->rows0 = p->res.rows, p->kept0 = p->res.kept;
            PL_TRY(pl__smp_open(&p->specs[p->next++], p->nm, p->strict, &p->res, &p->rd, err));
        }
        const pl_smp_row *x;
        int rc = pl__smp_next(p->rd, &x, err);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            pl__smp_close(p->rd);
            p->rd = NULL;
            PL_TRY(pl__smp_check_resolved(&p->specs[p->next - 1], p->res.rows - p->rows0,
                                          p->res.kept - p->kept0, &p->res.names, err));
            continue;
        }
        *row = (pl__sample_row){x->id, x->genes, x->n_genes, x->labels, x->dropped, x->cats};
        return 1;
    }
}

/* The tables read so far and the share read of the open one, over all. */
static double provider_frac(void *ctx)
{
    const pl_smp_provider *p = ctx;
    double done = p->rd ? p->next - 1 + pl__smp_frac(p->rd) : p->next;
    return done / p->n_specs;
}

int pl__smp_provider_open(pl_smp_provider *p, const pl_smp_spec *specs, uint32_t n,
                          const pl_names *nm, int strict, pl__build_samples *bs, pl_err *err)
{
    *p = (pl_smp_provider){.specs = specs, .n_specs = n, .nm = nm, .strict = strict, .bs = bs};
    PL_TRY(pl__smp_open(&specs[p->next++], nm, strict, &p->res, &p->rd, err));
    *bs = (pl__build_samples){.n_labels = p->res.n_labels,
                              .label_names = (const char *const *)p->res.label_names,
                              .next = provider_next, .frac = provider_frac, .ctx = p,
                              .n_categories = p->res.n_categories,
                              .category_names = (const char *const *)p->res.cat_names};
    return 0;
}

void pl__smp_provider_close(pl_smp_provider *p)
{
    pl__smp_close(p->rd);
    pl__smp_result_free(&p->res);
    free(p->levels);
    memset(p, 0, sizeof *p);
}
