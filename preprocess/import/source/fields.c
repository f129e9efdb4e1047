/* Checks of single fields shared by the readers of downloaded files
 * (fields.h). */
#include "fields.h"

#include <string.h>

#include "src/core/error.h"

int pl__imp_strip_taxon(const pl_src *src, pl__field *f, pl_imp_taxon *tx, pl_err *err)
{
    const char *dot = memchr(f->s, '.', f->len);
    size_t t = dot ? (size_t)(dot - f->s) : 0;
    int digits = t > 0;
    for (size_t i = 0; i < t; i++)
        digits &= f->s[i] >= '0' && f->s[i] <= '9';
    if (!digits || t + 1 >= f->len || t > sizeof tx->s)
        return pl__src_fail(src, f->col, err, "protein id '%.*s' is not TAXON.NAME",
                            (int)(f->len > 60 ? 60 : f->len), f->s);
    if (tx->len == 0) {
        memcpy(tx->s, f->s, t);
        tx->len = t;
    } else if (tx->len != t || memcmp(tx->s, f->s, t)) {
        return pl__src_fail(src, f->col, err, "taxon %.*s differs from taxon %.*s of the "
                            "rows before", (int)t, f->s, (int)tx->len, tx->s);
    }
    f->s += t + 1;
    f->len -= (uint32_t)(t + 1);
    f->col += (uint32_t)(t + 1);
    return 0;
}

int pl__imp_nonempty(const pl_src *src, const pl__field *f, const char *what, pl_err *err)
{
    if (f->len == 0)
        return pl__src_fail(src, f->col, err, "empty %s", what);
    return 0;
}
