/* Numbers and labels from text fields (parse.h). */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* The blanks strtod and strtof skip before a number. */
static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\n' || c == '\r';
}

/* Copy field `f` into `buf` as a C string for strtod/strtof, which skip
 * leading blanks: a field that starts with one is refused, so that the whole
 * field must be the number. @return 0 or -1. */
static int number_cstr(const pl__field *f, char *buf, size_t cap)
{
    if (f->len == 0 || f->len >= cap || is_blank(f->s[0]))
        return -1;
    memcpy(buf, f->s, f->len);
    buf[f->len] = '\0';
    return 0;
}

int pl__field_missing(const pl__field *f)
{
    static const char *const na[] = {"NA", "NaN", "nan"};
    if (f->len == 0)
        return 1;
    for (int i = 0; i < 3; i++)
        if (f->len == strlen(na[i]) && !memcmp(f->s, na[i], f->len))
            return 1;
    return 0;
}

int pl__parse_double(const pl__field *f, double *out)
{
    char buf[64], *end;
    if (number_cstr(f, buf, sizeof buf) < 0)
        return -1;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || isnan(v) || (errno == ERANGE && fabs(v) > 1.0))
        return -1;
    *out = v;
    return 0;
}

int pl__parse_float(const pl__field *f, float *out)
{
    char buf[64], *end;
    if (number_cstr(f, buf, sizeof buf) < 0)
        return -1;
    errno = 0;
    float v = strtof(buf, &end);
    if (*end || isnan(v))
        return -1;
    if (isinf(v) && errno == ERANGE) /* an infinity spelt out sets no ERANGE */
        return PL_ERANGE;
    *out = v;
    return 0;
}

int pl__parse_u64(const pl__field *f, uint64_t *out)
{
    uint64_t v = 0;
    if (f->len == 0 || f->len > 20)
        return -1;
    for (uint32_t i = 0; i < f->len; i++) {
        unsigned d = (unsigned)(f->s[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}
